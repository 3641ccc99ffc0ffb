"""The fleet report's files, written by the controller (plugin_utils/_report_files.py)."""

import os
import stat

import pytest
from ansible_collections.gpufleet.sglang.plugins.plugin_utils._report_files import ReportFilesError, write_report_files

FILES = {"fleet-report.md": "# SGLang fleet report\n", "fleet-report.json": '{"hosts": []}\n'}


def mode_of(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_the_directory_is_made_and_each_file_written_with_its_mode(tmp_path):
    dest = tmp_path / "report" / "today"
    result = write_report_files(str(dest), FILES)
    assert result["changed"] and sorted(result["written"]) == sorted(str(dest / n) for n in FILES)
    assert (dest / "fleet-report.md").read_text() == FILES["fleet-report.md"]
    assert mode_of(dest / "fleet-report.json") == 0o644 and mode_of(dest) == 0o755
    assert [p.name for p in dest.iterdir() if p.name.startswith(".")] == []  # no temporary file left


def test_a_second_run_with_the_same_content_changes_nothing(tmp_path):
    write_report_files(str(tmp_path), FILES)
    before = os.stat(tmp_path / "fleet-report.md").st_ino
    assert write_report_files(str(tmp_path), FILES) == {"changed": False, "dest": str(tmp_path), "written": [],
                                                        "diff": []}
    assert os.stat(tmp_path / "fleet-report.md").st_ino == before


def test_a_changed_file_is_replaced_in_one_step_and_its_diff_shown(tmp_path):
    write_report_files(str(tmp_path), FILES)
    os.chmod(tmp_path / "fleet-report.json", 0o600)
    result = write_report_files(str(tmp_path), dict(FILES, **{"fleet-report.md": "# two hosts\n"}))
    assert sorted(os.path.basename(p) for p in result["written"]) == ["fleet-report.json", "fleet-report.md"]
    md = next(d for d in result["diff"] if d["after_header"].endswith(".md"))
    assert md["before"] == "# SGLang fleet report\n" and md["after"] == "# two hosts\n"
    assert mode_of(tmp_path / "fleet-report.json") == 0o644


def test_check_mode_writes_nothing_and_says_what_would_change(tmp_path):
    dest = tmp_path / "new"
    result = write_report_files(str(dest), FILES, check_mode=True)
    assert result["changed"] and len(result["written"]) == 2 and not dest.exists()


@pytest.mark.parametrize("name", ["../escape.md", "sub/report.md", "", ".."])
def test_a_name_that_is_not_a_file_inside_the_directory_is_refused(tmp_path, name):
    with pytest.raises(ReportFilesError, match="is not a file name inside"):
        write_report_files(str(tmp_path), {name: "x"})


def test_a_file_where_the_directory_should_be_is_named(tmp_path):
    (tmp_path / "report").write_text("not a directory")
    with pytest.raises(ReportFilesError, match=r"report is not a directory: set sglang_fleet_report_dir"):
        write_report_files(str(tmp_path / "report"), FILES)
