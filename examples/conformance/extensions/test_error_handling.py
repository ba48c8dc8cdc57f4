from typing import Any

from apcore.errors import ModuleError
from pydantic import BaseModel


class Empty(BaseModel):
    pass


class ErrorHandling:
    description = "Always fails, to test error reporting"
    input_schema = Empty
    output_schema = Empty

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        raise ModuleError(code="INTENTIONAL_ERROR", message="This tool intentionally returns an error for testing")
