"""``mx.registry``: name -> class factories for serializable objects (MXNet 1.9.1's registry).

``mx.metric`` and ``mx.init`` build their ``register`` / ``alias`` / ``create`` trio on these
functions, as MXNet does, and so do libraries built on MXNet (GluonNLP's embeddings, subword
functions and datasets): one registry per base class, names are case-insensitive, re-registering
a name warns and overrides, and ``create`` accepts a name, an instance (returned as is), a dict of
keyword arguments, or the JSON strings ``'["name", {kwargs}]'`` / ``'{"nickname": "name", ...}'``
that ``dumps`` methods write.
"""
from __future__ import annotations

import json
import warnings
from typing import Any, Callable, Dict

__all__ = ["get_registry", "get_register_func", "get_alias_func", "get_create_func"]

_REGISTRY: Dict[type, Dict[str, type]] = {}


class _CreateArgumentError(TypeError, ValueError):
    """Arguments ``create`` cannot apply (to an instance, or beside a JSON config). MXNet
    asserts here; callers of the registry catch TypeError, those of ``mx.metric.create`` and
    ``mx.init.create`` ValueError, and both keep working."""


def _registry_of(base_class: type) -> Dict[str, type]:
    if not isinstance(base_class, type):
        raise TypeError(f"a registry is keyed by a class, got {base_class!r} "
                        f"({type(base_class).__name__})")
    return _REGISTRY.setdefault(base_class, {})


def get_registry(base_class: type) -> Dict[str, type]:
    """A copy of the ``{lower-case name: class}`` table registered under ``base_class``."""
    return dict(_registry_of(base_class))


def get_register_func(base_class: type, nickname: str) -> Callable[..., type]:
    """``register(klass, name=None)``: record a subclass of ``base_class`` under ``name``.

    The name defaults to the class name and is stored lower-case; registering a taken name
    warns (as MXNet does) and replaces the old entry.
    """
    registry = _registry_of(base_class)

    def register(klass: type, name: str | None = None) -> type:
        if not (isinstance(klass, type) and issubclass(klass, base_class)):
            raise TypeError(f"can only register subclasses of {base_class.__name__} as a "
                            f"{nickname}, got {klass!r}")
        key = (klass.__name__ if name is None else name).lower()
        old = registry.get(key)
        if old is not None and old is not klass:
            warnings.warn(f"New {nickname} {klass.__module__}.{klass.__name__} registered with "
                          f"name {key} is overriding existing {nickname} "
                          f"{old.__module__}.{old.__name__}", UserWarning, stacklevel=2)
        registry[key] = klass
        return klass

    register.__doc__ = f"Register a {nickname} class (a subclass of {base_class.__name__})."
    return register


def get_alias_func(base_class: type, nickname: str) -> Callable[..., Callable[[type], type]]:
    """``alias(*names)``: a class decorator registering the class under every given name."""
    register = get_register_func(base_class, nickname)

    def alias(*aliases: str) -> Callable[[type], type]:
        def register_aliases(klass: type) -> type:
            for name in aliases:
                register(klass, name)
            return klass
        return register_aliases

    alias.__doc__ = f"Register a {nickname} class under additional names."
    return alias


def get_create_func(base_class: type, nickname: str) -> Callable[..., Any]:
    """``create(name_or_instance_or_config, *args, **kwargs)``: build a registered ``nickname``.

    The name is the first positional argument or the ``nickname`` keyword. An instance of
    ``base_class`` is returned unchanged (extra arguments are then an error); a dict is used as
    keyword arguments; a string starting with ``[`` is JSON ``[name, kwargs]`` and one starting
    with ``{`` is JSON keyword arguments.
    """
    registry = _registry_of(base_class)

    def create(*args: Any, **kwargs: Any) -> Any:
        if args:
            name, args = args[0], args[1:]
        elif nickname in kwargs:
            name = kwargs.pop(nickname)
        else:
            raise TypeError(f"create() needs the {nickname} name as its first argument or as "
                            f"{nickname}=...")
        if isinstance(name, base_class):
            if args or kwargs:
                raise _CreateArgumentError(f"{nickname} {name!r} is already an instance; additional "
                                          f"arguments {args!r} {kwargs!r} cannot be applied to it")
            return name
        if isinstance(name, dict):
            return create(**name)
        if not isinstance(name, str):
            raise TypeError(f"{nickname} must be a name (str), an instance of "
                            f"{base_class.__name__} or a dict, got {type(name).__name__}")
        if name.startswith(("[", "{")):
            if args or kwargs:
                raise _CreateArgumentError(f"a JSON {nickname} config {name!r} takes no further arguments")
            try:
                config = json.loads(name)
            except json.JSONDecodeError as e:
                raise ValueError(f"cannot parse the JSON {nickname} config {name!r}: {e}") from None
            if isinstance(config, dict):
                return create(**config)
            if not (isinstance(config, list) and len(config) == 2 and isinstance(config[0], str)
                    and isinstance(config[1], dict)):
                raise ValueError(f"a JSON {nickname} config is '[\"name\", {{kwargs}}]' or an object "
                                 f"of keyword arguments, got {name!r}")
            return create(config[0], **config[1])
        key = name.lower()
        if key not in registry:
            raise ValueError(f"{name!r} is not a registered {nickname}; registered: "
                             f"{', '.join(sorted(registry)) or '(none)'}. A name that is not registered "
                             f"must be registered first with the {nickname} register function.")
        return registry[key](*args, **kwargs)

    create.__doc__ = (f"Create a {nickname} from a name, a {base_class.__name__} instance, a dict "
                      f"or a JSON config.")
    return create
