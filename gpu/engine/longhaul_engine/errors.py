"""The engine's refusals. Each carries a stable type shared with the TypeScript side
(workflows/contracts/errors.ts): the gpu-train activity turns the final `{"event": "error"}` line
into an ApplicationFailure of that type. Both types here are non-retryable.

Nothing to run: imported by manifest.py, checkpoint.py and train.py.
"""

INVALID_INPUT = "LonghaulInvalidInput"
CORRUPT = "LonghaulCorrupt"


class EngineError(Exception):
    """A refusal with a stable type; raised before any compute whenever possible."""

    error_type = INVALID_INPUT

    def to_json(self) -> dict:
        return {"event": "error", "type": self.error_type, "message": str(self)}


class InvalidBatch(EngineError):
    """The manifest or its samples break the contract (schema, lengths, NaN, staleness, groups)."""


class OutputExists(EngineError):
    """The output dir already holds a trained version; the engine never overwrites one."""


class CorruptCheckpoint(EngineError):
    """A model or optimizer file in the base dir cannot be read."""

    error_type = CORRUPT
