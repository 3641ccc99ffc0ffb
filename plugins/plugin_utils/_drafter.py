# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drafter: its config.json checked against the target model and the block size asked for, and the running
server's /server_info (its speculative settings) against what was asked.

Controller-only and pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


DRAFTER_ARCHITECTURES = ("DFlashDraftModel", "DFlash2DraftModel")


def _is_int(value, low):
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def target_layers(target_config):
    """num_hidden_layers of a target model's config.json (text_config first), or None."""
    if not isinstance(target_config, dict):
        return None
    text = target_config.get("text_config") if isinstance(target_config.get("text_config"), dict) else {}
    layers = text.get("num_hidden_layers", target_config.get("num_hidden_layers"))
    return layers if _is_int(layers, 1) else None


def drafter_problems(config, requested_block_size, target_config=None):
    """Check a DFlash drafter's config.json the way SGLang's parse_dflash_draft_config reads it.

    Keys come from config["dflash_config"] first, then the top level (num_hidden_layers from
    text_config when present): both z-lab schemas (block_size at the top level, or moved into
    dflash_config). With the target's config.json, the layers the drafter reads must exist there.
    Returns (problems, drafter_block_size).
    """
    if not isinstance(config, dict):
        return ["config.json is not a JSON object"], None
    section = config.get("dflash_config") if isinstance(config.get("dflash_config"), dict) else {}

    def get(key):
        if key in section:
            return section[key]
        if key == "num_hidden_layers" and isinstance(config.get("text_config"), dict):
            return config["text_config"].get(key, config.get(key))
        return config.get(key)

    problems = []
    architectures = config.get("architectures")
    if not isinstance(architectures, list) or not any(a in DRAFTER_ARCHITECTURES for a in architectures):
        problems.append("architectures %r is not a DFlash drafter (%s)"
                        % (architectures, " or ".join(DRAFTER_ARCHITECTURES)))
    block = get("block_size")
    if block is None:
        problems.append("config.json has no block_size (in dflash_config or at the top level)")
    elif not isinstance(block, int) or isinstance(block, bool) or block < 1:
        problems.append("block_size %r is not an integer >= 1" % (block,))
        block = None
    layers = get("num_hidden_layers")
    if not isinstance(layers, int) or isinstance(layers, bool) or layers < 1:
        problems.append("num_hidden_layers %r is not an integer >= 1" % (layers,))
    ids = get("target_layer_ids")
    if ids is not None and (not isinstance(ids, list) or not ids or
                            not all(isinstance(i, int) and not isinstance(i, bool) and i >= 0 for i in ids)):
        problems.append("target_layer_ids %r is not a non-empty list of integers >= 0" % (ids,))
    mask_id = get("mask_token_id")
    if mask_id is not None and (not isinstance(mask_id, int) or isinstance(mask_id, bool) or mask_id < 0):
        problems.append("mask_token_id %r is not an integer >= 0" % (mask_id,))
    for first, second in (("conv_kernel_size", "conv_group_size"), ("selector_rank", "selector_top_k")):
        if (get(first) is None) != (get(second) is None):
            problems.append("%s and %s must be set together" % (first, second))
    layers_of_target = target_layers(target_config)
    if layers_of_target and isinstance(ids, list) and ids and all(_is_int(i, 0) for i in ids) \
            and max(ids) >= layers_of_target:
        problems.append("target_layer_ids reach layer %d but the target model has %d layers (num_hidden_layers): "
                        "this drafter was made for another target" % (max(ids), layers_of_target))
    num_target = get("num_target_layers")
    if layers_of_target and _is_int(num_target, 1) and num_target != layers_of_target:
        problems.append("num_target_layers is %d but the target model has %d layers: this drafter was made for "
                        "another target" % (num_target, layers_of_target))
    if block is not None and requested_block_size is not None and int(requested_block_size) != block:
        problems.append("the drafter was trained with block_size %d but %s was requested"
                        % (block, requested_block_size))
    return problems, block


def host_drafter_problems(facts, settings):
    """The drafter directory and config.json the host reported, checked against the target model, as problems.

    Each problem names only what the facts module read. Without a drafter path there is nothing to read (the
    settings' own problem names sglang_dflash_draft_model_path), and facts that failed are their own reason: neither
    adds a problem here, let alone one about a config.json that was never opened.
    """
    drafter = facts.get("draft_model") or {}
    path_setting = settings.get("draft_model_path")
    if settings.get("drafter") and (not path_setting or not drafter.get("dir_exists", True)):
        # Not fetched yet (only a run that fetches nothing sees this: the fleet report). A deployment fetches the
        # source first (tasks/drafter.yml), and these checks then read the verified copy's config.json.
        return []
    if not path_setting or facts.get("failed"):
        return []
    if not drafter.get("dir_exists", True):
        return ["drafter directory %s does not exist on this host (sglang_dflash_draft_model_path)" % path_setting]
    if drafter.get("error"):
        return [drafter["error"]]
    if "config" not in drafter or not drafter.get("path"):
        return ["the drafter in %s was not checked: the facts of this host hold no reading of its config.json "
                "(sglang_dflash_draft_model_path)" % path_setting]
    target = facts.get("model") or {}
    problems, _block = drafter_problems(drafter["config"], settings.get("block_size"), target.get("config"))
    return ["%s: %s" % (drafter["path"], p) for p in problems]
