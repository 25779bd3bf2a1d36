"""A small JSON Schema (2020-12 subset) validator for manifest.schema.json, so the engine checks the
same contract the TypeScript side writes without another dependency.

Supported keywords: type, const, enum, minimum, maximum, exclusiveMinimum, exclusiveMaximum,
minLength, maxLength, minItems, maxItems, items, properties, required, additionalProperties (false),
$ref (local "#/..." pointers), oneOf. For oneOf over objects whose branches pin a property with
`const` (a discriminator such as "kind" or "mode"), only the matching branch's errors are reported,
so messages stay precise. Booleans are never integers or numbers.

Check: cd gpu/engine && ../../.longhaul/tools/venv/bin/python -m longhaul_engine.schema manifest.json
"""
import json
import sys
from pathlib import Path

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "manifest.schema.json"

_TYPES = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "integer": lambda v: (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer()),
}


def load_schema() -> dict:
    return json.loads(SCHEMA_PATH.read_text())


def _resolve(root: dict, ref: str) -> dict:
    assert ref.startswith("#/"), f"only local $ref supported, got {ref}"
    node = root
    for part in ref[2:].split("/"):
        node = node[part]
    return node


def _discriminated(root: dict, branches: list, value) -> list | None:
    """The branches whose const-pinned properties match `value` (None when no branch pins any)."""
    if not isinstance(value, dict):
        return None
    matching, pinned = [], False
    for branch in branches:
        resolved = _resolve(root, branch["$ref"]) if "$ref" in branch else branch
        consts = {k: s["const"] for k, s in resolved.get("properties", {}).items() if "const" in s and k in resolved.get("required", [])}
        consts.pop("schemaVersion", None)
        if consts:
            pinned = True
            if all(value.get(k) == c for k, c in consts.items()):
                matching.append(branch)
    return matching if pinned else None


def _check_bounds(schema: dict, value, where: str, errors: list) -> None:
    if _TYPES["number"](value):
        if "minimum" in schema and value < schema["minimum"]:
            errors.append(f"{where}: {value} is below the minimum {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            errors.append(f"{where}: {value} is above the maximum {schema['maximum']}")
        if "exclusiveMinimum" in schema and value <= schema["exclusiveMinimum"]:
            errors.append(f"{where}: {value} must be greater than {schema['exclusiveMinimum']}")
        if "exclusiveMaximum" in schema and value >= schema["exclusiveMaximum"]:
            errors.append(f"{where}: {value} must be less than {schema['exclusiveMaximum']}")
    if isinstance(value, str):
        if len(value) < schema.get("minLength", 0):
            errors.append(f"{where}: must not be shorter than {schema['minLength']} characters")
        if "maxLength" in schema and len(value) > schema["maxLength"]:
            errors.append(f"{where}: must not be longer than {schema['maxLength']} characters")
    if isinstance(value, list):
        if len(value) < schema.get("minItems", 0):
            errors.append(f"{where}: must have at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            errors.append(f"{where}: must have at most {schema['maxItems']} items")


def _check_object(root: dict, schema: dict, value: dict, where: str, errors: list) -> None:
    properties = schema.get("properties", {})
    for key in schema.get("required", []):
        if key not in value:
            errors.append(f"{where}.{key}: is required")
    for key, item in value.items():
        if key in properties:
            validate(root, properties[key], item, f"{where}.{key}", errors)
        elif schema.get("additionalProperties") is False:
            errors.append(f"{where}.{key}: is not an allowed field")


def _check_one_of(root: dict, schema: dict, value, where: str, errors: list) -> None:
    branches = schema["oneOf"]
    candidates = _discriminated(root, branches, value)
    if candidates is not None and len(candidates) == 1:
        validate(root, candidates[0], value, where, errors)
        return
    if candidates == []:
        errors.append(f"{where}: matches none of the allowed variants (check its kind/mode field)")
        return
    passing = [b for b in branches if not validate(root, b, value, where, [])]
    if len(passing) != 1:
        errors.append(f"{where}: must match exactly one allowed variant, matches {len(passing)}")


def _all_simple_items_valid(items: dict, values: list) -> bool:
    """Fast path for long token arrays: one pass with a plain predicate; False means "check slowly"
    (to find and name the bad item), never "invalid"."""
    if set(items) - {"type", "minimum", "enum", "description"}:
        return False
    if "enum" in items:
        allowed = set(items["enum"])
        return all(type(v) is int and v in allowed for v in values)
    low = items.get("minimum", float("-inf"))
    if items.get("type") == "integer":
        return all(type(v) is int and v >= low for v in values)
    if items.get("type") == "number":
        return all((type(v) is int or type(v) is float) and v >= low for v in values)
    return False


def validate(root: dict, schema: dict, value, where: str = "manifest", errors: list | None = None) -> list:
    """Append human-readable errors (each naming the field path) to `errors` and return it."""
    errors = [] if errors is None else errors
    if "$ref" in schema:
        return validate(root, _resolve(root, schema["$ref"]), value, where, errors)
    if "oneOf" in schema:
        _check_one_of(root, schema, value, where, errors)
        return errors
    if "const" in schema and value != schema["const"]:
        errors.append(f"{where}: must be {json.dumps(schema['const'])}, got {json.dumps(value)}")
        return errors
    if "enum" in schema and value not in schema["enum"]:
        errors.append(f"{where}: must be one of {json.dumps(schema['enum'])}, got {json.dumps(value)}")
        return errors
    if "type" in schema:
        types = schema["type"] if isinstance(schema["type"], list) else [schema["type"]]
        if not any(_TYPES[t](value) for t in types):
            errors.append(f"{where}: must be of type {'|'.join(types)}, got {type(value).__name__}")
            return errors
    _check_bounds(schema, value, where, errors)
    if isinstance(value, dict):
        _check_object(root, schema, value, where, errors)
    if isinstance(value, list) and "items" in schema:
        items = schema["items"]
        if _all_simple_items_valid(items, value):
            return errors
        for index, item in enumerate(value):
            before = len(errors)
            validate(root, items, item, f"{where}[{index}]", errors)
            if len(errors) > before + 20:
                break
    return errors


if __name__ == "__main__":
    problems = validate(load_schema(), load_schema(), json.loads(Path(sys.argv[1]).read_text()))
    print(json.dumps({"valid": not problems, "errors": problems[:50]}))
    sys.exit(1 if problems else 0)
