"""The role's variables: each default written once (defaults/main.yml, with argument_specs.yml documenting it and a
test keeping the two equal); the plan reads the variables the spec lists, and its defaults from defaults/main.yml."""

from pathlib import Path

import yaml
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _services, _settings

ROLE = Path(__file__).resolve().parents[3] / "roles" / "sglang_dflash"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
SPEC = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
SETTINGS = [name[len(_settings.PREFIX):] for name in _settings.PLAN_VARIABLES]


def test_every_default_is_specified_with_the_same_default():
    for name, value in DEFAULTS.items():
        assert name in SPEC, "%s has a default but no argument spec" % name
        if value is not None:
            spec_default = SPEC[name].get("default")
            assert spec_default == value, "%s: default %r, spec %r" % (name, value, spec_default)


def test_every_specified_variable_has_a_default_or_is_required():
    for name, spec in SPEC.items():
        assert name in DEFAULTS or spec.get("required") or name == "sglang_dflash_draft_model_path", name


def test_the_plan_normalises_settings_that_it_reads():
    checked = set(_settings.INTEGER_SETTINGS) | set(_settings.FLOAT_SETTINGS) | set(_settings.BOOLEAN_SETTINGS)
    assert checked <= set(SETTINGS), checked - set(SETTINGS)
    for key in checked:
        assert "sglang_dflash_" + key in SPEC, key


def test_every_per_service_setting_is_a_setting_of_the_plan():
    # An entry of sglang_dflash_services overrides the plan's settings by these names.
    assert set(_services.PER_SERVICE_SETTINGS) <= set(SETTINGS), set(_services.PER_SERVICE_SETTINGS) - set(SETTINGS)
    for key in _services.PER_SERVICE_SETTINGS:
        assert "sglang_dflash_" + key in SPEC, key


def test_the_plan_takes_every_variable_of_the_spec_but_the_secrets():
    secrets = set(name for name, spec in SPEC.items() if spec.get("no_log"))
    assert secrets == {"sglang_dflash_gateway_token", "sglang_dflash_drafter_token"}
    assert set("sglang_dflash_" + key for key in SETTINGS) == set(SPEC) - secrets


def test_the_plans_defaults_are_the_roles():
    # The plan fills a setting a caller leaves out from defaults/main.yml itself, not from a copy of its own.
    defaults = _settings.role_defaults()
    assert defaults == dict((name[len("sglang_dflash_"):], value) for name, value in DEFAULTS.items())
