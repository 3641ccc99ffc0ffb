"""Pure logic of python_package_info: parsing the probe's answer and classifying the install."""

import json

import pytest
from ansible_collections.gpufleet.sglang.plugins.module_utils.python_package import (
    PROBE_MARKER,
    BrokenInstall,
    ProbeError,
    classify,
    parse_probe_output,
)

SP = "/opt/ml-env/lib/python3.11/site-packages"


def raw(**over):
    base = {
        "python": "3.11.7", "executable": "/opt/ml-env/bin/python3", "prefix": "/opt/ml-env",
        "base_prefix": "/usr", "real_prefix": None, "site_dirs": [SP],
        "spec": {"origin": SP + "/sglang/__init__.py", "locations": [SP + "/sglang"],
                 "real_locations": [SP + "/sglang"], "loader": "SourceFileLoader"},
        "dist": {"name": "sglang", "version": "0.5.23", "path": SP + "/sglang-0.5.23.dist-info",
                 "direct_url.json": None, "RECORD": True},
        "markers": {"egg_links": {}, "editable_pth": [], "editable_finders": []},
        "source_version": "0.5.23",
    }
    base.update(over)
    return base


def test_parse_skips_noise_printed_by_site_hooks():
    out = "sitecustomize says hi\n%s%s\n" % (PROBE_MARKER, json.dumps({"python": "3.11"}))
    assert parse_probe_output(out) == {"python": "3.11"}


@pytest.mark.parametrize("out", ["", "hello\n", PROBE_MARKER + "{not json\n"])
def test_parse_rejects_non_probe_output(out):
    with pytest.raises(ProbeError):
        parse_probe_output(out)


def test_regular():
    r = classify(raw(), "sglang")
    assert (r["install"], r["version"], r["in_venv"]) == ("regular", "0.5.23", True)
    assert r["search_roots"] == [SP + "/sglang"]


def test_system_python_is_not_a_venv():
    assert classify(raw(prefix="/usr", base_prefix="/usr"), "sglang")["in_venv"] is False


def test_direct_url_editable_wins_and_names_the_checkout():
    dist = dict(raw()["dist"], **{"direct_url.json": json.dumps(
        {"url": "file:///srv/src/sglang%20fork/python", "dir_info": {"editable": True}})})
    pkg = "/srv/src/sglang fork/python/sglang"
    spec = {"origin": pkg + "/__init__.py", "locations": [pkg], "real_locations": [pkg], "loader": "SourceFileLoader"}
    r = classify(raw(dist=dist, spec=spec), "sglang")
    assert r["install"] == "editable"
    assert r["editable_method"] == "direct_url.json"
    assert r["editable_source"] == "/srv/src/sglang fork/python"


def test_non_editable_direct_url_is_regular():
    dist = dict(raw()["dist"], **{"direct_url.json": json.dumps({"url": "file:///tmp/x.whl", "archive_info": {}})})
    assert classify(raw(dist=dist), "sglang")["install"] == "regular"


def test_symlinked_package_dir_counts_where_it_really_lives():
    spec = dict(raw()["spec"], real_locations=["/srv/checkout/python/sglang"])
    r = classify(raw(spec=spec), "sglang")
    assert r["install"] == "editable" and r["search_roots"] == ["/srv/checkout/python/sglang"]


def test_missing_and_broken():
    assert classify(raw(spec=None, dist=None), "sglang")["install"] == "missing"
    with pytest.raises(BrokenInstall, match="files are gone"):
        classify(raw(spec=None), "sglang")
    with pytest.raises(BrokenInstall, match="has no dist-info"):
        classify(raw(dist=None), "sglang")


def test_namespace():
    spec = {"origin": None, "locations": ["/a/ns", "/b/ns"], "real_locations": ["/a/ns", "/b/ns"], "loader": None}
    r = classify(raw(spec=spec, dist=None, site_dirs=["/a", "/b"]), "ns")
    assert r["install"] == "namespace" and r["search_roots"] == ["/a/ns", "/b/ns"] and r["file"] is None
