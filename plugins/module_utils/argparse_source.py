# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.sglang contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read the command-line flags of an argparse program from its Python source, importing nothing.

SGLang builds its parser in two ways, and this reads both with ``ast``:
- annotated dataclass fields, ``name: A[T, "help"]`` or ``name: A[T, Arg(help=..., aliases=[...],
  cli_name=..., no_cli=True)]`` (``A`` is ``typing.Annotated``), turned into ``--name-with-dashes``
  (in ``sglang/srt/arg_groups/fields/*.py`` since 0.5.20, inside ``ServerArgs`` before);
- plain ``parser.add_argument("--flag", ...)`` calls.
Flags whose help is ``argparse.SUPPRESS`` are returned with ``hidden: true``: argparse accepts them
but ``--help`` does not show them (SGLang's deprecated aliases). Choice lists computed at run
time cannot be seen; ``choices`` is only set for literal lists.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os

# Where SGLang's parser is defined, relative to the package directory: the flags live in
# server_args.py and (0.5.20+) arg_groups/fields/; argparse_actions.py holds the custom
# Action classes that decide whether a deprecated switch takes a value. The auto method's
# cross-check with --help reports any flag a future release defines elsewhere.
SGLANG_PARSER_SOURCES = ("srt/server_args.py", "srt/arg_groups/fields", "srt/arg_groups/argparse_actions.py")


class SourceReadError(Exception):
    """The source files are missing or cannot be parsed."""


def _const_str(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def _const_list(node):
    if isinstance(node, (ast.List, ast.Tuple)):
        values = [n.value for n in node.elts if isinstance(n, ast.Constant)]
        if len(values) == len(node.elts):
            return values
    return None


def _is_suppress(node):
    return (isinstance(node, ast.Attribute) and node.attr == "SUPPRESS") or _const_str(node) == "==SUPPRESS=="


def _name_of(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _help_text(node):
    text = _const_str(node)
    if text is not None:
        return text
    if isinstance(node, ast.JoinedStr):
        return "".join(_const_str(v) or "{...}" for v in node.values)
    return None


def _is_bool(annotation):
    """bool or Optional[bool] / bool | None."""
    if _name_of(annotation) == "bool":
        return True
    if isinstance(annotation, ast.Subscript) and _name_of(annotation.value) == "Optional":
        return _name_of(annotation.slice) == "bool"
    if isinstance(annotation, ast.BinOp) and isinstance(annotation.op, ast.BitOr):
        return _is_bool(annotation.left) or _is_bool(annotation.right)
    return False


def _literal_choices(annotation):
    if isinstance(annotation, ast.Subscript) and _name_of(annotation.value) == "Optional":
        annotation = annotation.slice
    if isinstance(annotation, ast.Subscript) and _name_of(annotation.value) == "Literal":
        inner = annotation.slice
        return _const_list(inner) if isinstance(inner, ast.Tuple) else _const_list(ast.Tuple(elts=[inner]))
    return None


def _flag(name, aliases, takes_value, choices, help_text, hidden, origin):
    return {
        "name": name,
        "aliases": aliases,
        "takes_value": takes_value,
        "metavar": None,
        "choices": choices,
        "default": None,
        "help": help_text,
        "group": None,
        "negated_by": None,
        "hidden": hidden,
        "source": origin,
    }


def _annotated_field(node, origin, custom_actions):
    """A flag from `name: A[T, "help" | Arg(...)]`, or None for fields with no CLI surface."""
    ann = node.annotation
    if not (isinstance(ann, ast.Subscript) and _name_of(ann.value) in ("A", "Annotated")):
        return None
    if not isinstance(node.target, ast.Name):
        return None
    parts = ann.slice.elts if isinstance(ann.slice, ast.Tuple) else [ann.slice]
    if len(parts) < 2:
        return None
    inner, meta = parts[0], parts[1]
    field = node.target.id
    help_text = _const_str(meta)
    keywords = {}
    if help_text is None:
        if not (isinstance(meta, ast.Call) and _name_of(meta.func) == "Arg"):
            return None
        keywords = {k.arg: k.value for k in meta.keywords if k.arg}
        if isinstance(keywords.get("no_cli"), ast.Constant) and keywords["no_cli"].value is True:
            return None
        help_node = keywords.get("help")
        if help_node is None and meta.args:
            help_node = meta.args[0]
        help_text = _help_text(help_node) if help_node is not None else ""
    name = _const_str(keywords.get("cli_name")) or "--" + field.replace("_", "-")
    aliases = _const_list(keywords["aliases"]) if "aliases" in keywords else []
    hidden = "help" in keywords and _is_suppress(keywords["help"])
    action = keywords.get("action")
    takes_value = not _is_bool(inner) if action is None else _action_takes_value(action, custom_actions)
    choices = _const_list(keywords["choices"]) if "choices" in keywords else _literal_choices(inner)
    flag = _flag(name, aliases or [], takes_value, choices, None if hidden else help_text, hidden,
                 "%s:%d" % (origin, node.lineno))
    if action is not None and _name_of(action) == "BooleanOptionalAction":
        flag["negated_by"] = "--no-" + name[2:]
    return flag


def _action_takes_value(action, custom_actions):
    value = _const_str(action)
    if value in ("store_true", "store_false", "store_const", "count", "help", "version", "append_const"):
        return False
    if value is None and _name_of(action) == "BooleanOptionalAction":
        return False
    # Custom Action classes: their own nargs default, else argparse's (one value).
    return custom_actions.get(_name_of(action), True)


def custom_action_classes(tree):
    """{ClassName: takes_value} for argparse.Action subclasses whose __init__ fixes nargs.

    SGLang's deprecated switches are Action classes with ``nargs=0`` in ``__init__``'s
    signature or in its ``super().__init__(...)`` call.
    """
    found = {}
    for node in tree.body:
        if not (isinstance(node, ast.ClassDef) and any(_name_of(b) == "Action" for b in node.bases)):
            continue
        for stmt in node.body:
            if not (isinstance(stmt, ast.FunctionDef) and stmt.name == "__init__"):
                continue
            nargs = None
            args = stmt.args
            for arg, default in zip(args.args[len(args.args) - len(args.defaults):], args.defaults):
                if arg.arg == "nargs" and isinstance(default, ast.Constant):
                    nargs = default.value
            for arg, default in zip(args.kwonlyargs, args.kw_defaults):
                if arg.arg == "nargs" and isinstance(default, ast.Constant):
                    nargs = default.value
            for call in ast.walk(stmt):
                if isinstance(call, ast.Call):
                    for kw in call.keywords:
                        if kw.arg == "nargs" and isinstance(kw.value, ast.Constant):
                            nargs = kw.value.value
            if nargs is not None:
                found[node.name] = nargs != 0
    return found


def _add_argument(call, origin, custom_actions):
    names = [s for s in (_const_str(a) for a in call.args) if s and s.startswith("-")]
    if not names:
        return None
    keywords = {k.arg: k.value for k in call.keywords if k.arg}
    longs = [n for n in names if n.startswith("--")]
    primary = longs[0] if longs else names[0]
    hidden = "help" in keywords and _is_suppress(keywords["help"])
    action = keywords.get("action")
    takes_value = True if action is None else _action_takes_value(action, custom_actions)
    nargs = keywords.get("nargs")
    if isinstance(nargs, ast.Constant):
        takes_value = nargs.value != 0
    flag = _flag(primary, [n for n in names if n != primary], takes_value,
                 _const_list(keywords["choices"]) if "choices" in keywords else None,
                 None if hidden else _help_text(keywords.get("help")) or "", hidden,
                 "%s:%d" % (origin, call.lineno))
    if action is not None and _name_of(action) == "BooleanOptionalAction":
        flag["negated_by"] = "--no-" + primary[2:]
    return flag


def parse_source(text, origin="<source>"):
    try:
        return ast.parse(text, filename=origin)
    except SyntaxError as exc:
        raise SourceReadError("%s does not parse as Python: %s" % (origin, exc)) from None


def flags_from_source(text, origin="<source>", custom_actions=None):
    """All flags defined in one Python file's text."""
    return flags_from_tree(parse_source(text, origin), origin, custom_actions)


def flags_from_tree(tree, origin, custom_actions=None):
    custom_actions = custom_actions if custom_actions is not None else custom_action_classes(tree)
    flags = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef):
            for stmt in node.body:
                if isinstance(stmt, ast.AnnAssign):
                    flag = _annotated_field(stmt, origin, custom_actions)
                    if flag:
                        flags.append(flag)
        elif isinstance(node, ast.Call) and _name_of(node.func) == "add_argument":
            flag = _add_argument(node, origin, custom_actions)
            if flag:
                flags.append(flag)
    return flags


def parser_source_files(package_dir, relative=SGLANG_PARSER_SOURCES):
    """The .py files under package_dir that define the parser, in a stable order."""
    files = []
    for rel in relative:
        path = os.path.join(package_dir, rel)
        if os.path.isfile(path):
            files.append(path)
        elif os.path.isdir(path):
            for root, dirs, names in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                files.extend(os.path.join(root, n) for n in sorted(names) if n.endswith(".py"))
    return files


def flags_from_package(package_dir, relative=SGLANG_PARSER_SOURCES):
    """Flags of the parser defined in package_dir's sources, merged by option string.

    The first definition of an option string wins, as argparse itself refuses duplicates.
    """
    files = parser_source_files(package_dir, relative)
    if not files:
        raise SourceReadError("none of %s exist under %s" % (", ".join(relative), package_dir))
    trees = []
    custom_actions = {}
    for path in files:
        try:
            with open(path, "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
        except OSError as exc:
            raise SourceReadError("cannot read %s: %s" % (path, exc)) from None
        origin = os.path.relpath(path, os.path.dirname(package_dir))
        tree = parse_source(text, origin)
        custom_actions.update(custom_action_classes(tree))
        trees.append((tree, origin))
    flags = []
    seen = set()
    for tree, origin in trees:
        for flag in flags_from_tree(tree, origin, custom_actions):
            strings = [flag["name"]] + flag["aliases"]
            if any(s in seen for s in strings):
                continue
            seen.update(strings)
            flags.append(flag)
    return flags, files
