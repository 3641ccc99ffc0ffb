"""The role's variables are declared in defaults, argument_specs, vars/main.yml (the plan's settings) and the plan's
normalisation: the four must agree."""

import re
from pathlib import Path

import yaml
from ansible_collections.gpufleet.sglang.plugins.plugin_utils import _settings

ROLE = Path(__file__).resolve().parents[3] / "roles" / "sglang_dflash"
DEFAULTS = yaml.safe_load((ROLE / "defaults" / "main.yml").read_text())
SPEC = yaml.safe_load((ROLE / "meta" / "argument_specs.yml").read_text())["argument_specs"]["main"]["options"]
SETTINGS = yaml.safe_load((ROLE / "vars" / "main.yml").read_text())["sglang_dflash__settings"]


def test_every_default_is_specified_with_the_same_default():
    for name, value in DEFAULTS.items():
        assert name in SPEC, "%s has a default but no argument spec" % name
        if value is not None:
            spec_default = SPEC[name].get("default")
            assert spec_default == value, "%s: default %r, spec %r" % (name, value, spec_default)


def test_every_specified_variable_has_a_default_or_is_required():
    for name, spec in SPEC.items():
        assert name in DEFAULTS or spec.get("required") or name == "sglang_dflash_draft_model_path", name


def test_the_plan_settings_read_role_variables_that_exist():
    for key, template in SETTINGS.items():
        variables = set(re.findall(r"\b(sglang_dflash_[a-z_]+)\b", str(template)))
        public = [v for v in variables if not v.startswith("sglang_dflash__")]
        for variable in public:
            assert variable in SPEC, "vars/main.yml %s reads %s, which the argument spec lacks" % (key, variable)


def test_the_plan_normalises_settings_that_vars_main_passes():
    checked = set(_settings.INTEGER_SETTINGS) | set(_settings.FLOAT_SETTINGS) | set(_settings.BOOLEAN_SETTINGS)
    assert checked <= set(SETTINGS), checked - set(SETTINGS)
    for key in checked:
        assert "sglang_dflash_" + key in SPEC, key
