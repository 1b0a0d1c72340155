"""Command-line flags for drlhp's settings, derived from their declarations (``drlhp.config``).

A setting's flag is its name (``reward_predictor_lr``: ``--reward-predictor-lr``), and its default and help are the
declared ones, so the ``drlhp`` command, the examples and the settings page say the same thing. A yes/no setting
gets ``--name`` and ``--no-name``; a setting that may be None takes ``none``.
"""
from __future__ import annotations

import argparse
import re
from collections.abc import Iterable
from typing import Any, Callable, get_args

import drlhp.config as config_module
from drlhp.config import setting_field

#: What a flag takes for a setting's None.
NONE = "none"
_DECLARED: Any = object()  # add_setting_flag's default: the setting's declared default
_BASE_TYPES: dict[str, type] = {"int": int, "float": float, "str": str, "bool": bool}
_METAVARS = {int: "N", float: "X", str: "TEXT"}


def flag(name: str) -> str:
    """The command-line flag of the setting ``name``."""
    return "--" + name.replace("_", "-")


def plain(text: str) -> str:
    """A declared help text (Markdown) as a terminal shows it: `code` unquoted, a [link](page.md#part) as the
    link's words and its page under docs/."""
    text = re.sub(r"\[([^\]]+)\]\(([^)#]+)(?:#[^)]*)?\)", r"\1 (docs/\2)", text)
    return text.replace("`", "")


def value_type(name: str) -> tuple[type, bool, tuple | None]:
    """The setting ``name``'s value type for a flag (int, float, str or bool), whether it may be None, and its
    choices (a ``Literal``'s values) if it has them. A setting that holds an object (a labeller, a function) has no
    flag: ``ValueError``."""
    annotation = str(setting_field(name).type)
    optional = annotation.endswith(" | None")
    base = annotation.removesuffix(" | None")
    if base in _BASE_TYPES:
        return _BASE_TYPES[base], optional, None
    choices = get_args(getattr(config_module, base, None))
    if not choices or not all(isinstance(c, str) for c in choices):
        raise ValueError(f"the setting {name} ({annotation}) holds an object: it has no command-line flag")
    return str, optional, choices


def _parse(base: type, optional: bool) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        return None if optional and text.lower() == NONE else base(text)

    parse.__name__ = f"{base.__name__}{' or none' if optional else ''}"  # argparse names it in an error
    return parse


def add_setting_flag(parser: argparse.ArgumentParser | argparse._ArgumentGroup, name: str,
                     default: Any = _DECLARED, also: str = "") -> None:
    """Add the flag of the setting ``name`` to ``parser``, its value stored under ``name``; ``default``: this
    program's, if not the declared one; ``also``: what else this program does with the value, after the declared
    help."""
    declared = setting_field(name)
    default = declared.default if default is _DECLARED else default
    base, optional, choices = value_type(name)
    help_text = plain(declared.metadata["help"] + (f"; {also}" if also else "")).replace("%", "%%")  # argparse: %
    if base is bool:
        parser.add_argument(flag(name), dest=name, action=argparse.BooleanOptionalAction, default=default,
                            help=help_text)
        return
    shown = NONE if default is None else default
    metavar = None if choices else _METAVARS[base] + ("|none" if optional else "")
    parser.add_argument(flag(name), dest=name, type=_parse(base, optional), choices=choices, default=default,
                        metavar=metavar, help=f"{help_text} (default: {shown})")


def add_setting_flags(parser: argparse.ArgumentParser | argparse._ArgumentGroup, names: Iterable[str]) -> None:
    """Add the flags of the settings ``names``, each with its declared default."""
    for name in names:
        add_setting_flag(parser, name)


def settings_from(args: argparse.Namespace, names: Iterable[str]) -> dict[str, Any]:
    """The settings ``names`` as parsed, by name: keyword arguments for the wrappers or ``PreferenceConfig``."""
    return {name: getattr(args, name) for name in names}
