import asyncio
from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text, release_stream


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class Reconnection:
    description = "Releases its response stream mid-call; the client reconnects and gets the result"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        released = await release_stream(context)
        await asyncio.sleep(0.2)
        return {"message": Text(text=f"Reconnection test completed (stream released: {str(released).lower()})")}
