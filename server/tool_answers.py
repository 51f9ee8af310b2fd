"""What tool answers are made of: pydantic models, so that every tool lists an output schema.

An answer shows records the contracts already define (a GHAP entry, a loop, a value...), often
only some of their fields, sometimes beside fields of its own. Such an answer is declared as an
:class:`Answer` that picks the fields it shows from their model, by name, so that no field's type
or rule is written twice::

    class GhapCard(IsoformatTimes, of=GhapEntry, fields=("id", "domain", "goal", "created_at")):
        warnings: list[PremortemWarning]

The picked fields come first, in the order given, then the class's own; a subclass can pick more
(after its base's). :meth:`Answer.pick` builds an answer from the records that hold its fields.

Fields that answers leave out when they have nothing to say (no ``note``, say) are
:func:`omitted` when None, as they always were: ``exclude_if``, not null.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, Self, TypeVar

from pydantic import BaseModel, Field, SerializerFunctionWrapHandler, field_serializer

if TYPE_CHECKING:
    from pydantic._internal._model_construction import ModelMetaclass
else:
    ModelMetaclass = type(BaseModel)  # pydantic's metaclass, reached without its private module

T = TypeVar("T")


def omitted(description: str | None = None, *, alias: str | None = None) -> Any:
    """A field left out of the answer while it is None (never written as null)."""
    return Field(default=None, exclude_if=_is_none, description=description, alias=alias)


def _is_none(value: object) -> bool:
    return value is None


class _Picking(ModelMetaclass):
    """Adds the fields a class names (``of=Model, fields=(...)`` or ``exclude=(...)``) from their
    model before pydantic builds the class: the same annotation, default and constraints. With
    ``null=True`` each picked field is None instead (the keys of a record that is absent)."""

    def __new__(
        mcs,
        name: str,
        bases: tuple[type[Any], ...],
        namespace: dict[str, Any],
        *,
        of: type[BaseModel] | None = None,
        fields: tuple[str, ...] | None = None,
        exclude: tuple[str, ...] = (),
        null: bool = False,
        **kwargs: Any,
    ) -> type:
        if of is not None:
            names = fields if fields is not None else tuple(of.model_fields)
            unknown = [field for field in (*names, *exclude) if field not in of.model_fields]
            if unknown:
                raise TypeError(f"{name}: {of.__name__} has no field {', '.join(unknown)}")
            picked = {field: of.model_fields[field] for field in names if field not in exclude}
            own = namespace.get("__annotations__", {})
            namespace["__annotations__"] = {
                **{field: None if null else info.annotation for field, info in picked.items()},
                **own,
            }
            for field, info in picked.items():
                namespace.setdefault(field, None if null else copy.copy(info))
        return super().__new__(mcs, name, bases, namespace, **kwargs)


class Answer(BaseModel, metaclass=_Picking):
    """A tool's answer (or part of one); see the module's docstring for picking fields."""

    @classmethod
    def pick(cls, *sources: object, **values: Any) -> Self:
        """An answer whose every field is taken from ``values`` if given there, else from the
        first of ``sources`` that has it (an attribute or a property)."""
        data = dict(values)
        for field in cls.model_fields:
            if field in data:
                continue
            for source in sources:
                if hasattr(source, field):
                    data[field] = getattr(source, field)
                    break
        return cls.model_validate(data)


class IsoformatTimes(Answer):
    """Times written as ``datetime.isoformat()`` writes them ("+00:00" for UTC, not pydantic's "Z"):
    the GHAP and loop tools always answered so, and an answer does not change its spelling."""

    @field_serializer("*", mode="wrap", when_used="json", check_fields=False)
    def _isoformat(self, value: Any, handler: SerializerFunctionWrapHandler) -> Any:
        return value.isoformat() if isinstance(value, datetime) else handler(value)


class Results(BaseModel, Generic[T]):
    """A list answer: the results, best or newest first, and how many there are."""

    results: list[T]
    count: int

    @classmethod
    def of(cls, results: list[T]) -> Self:
        return cls(results=results, count=len(results))
