from typing import Any

from pydantic import BaseModel

from apcore_mcp import Audio

SILENCE_WAV = (
    "UklGRkwAAABXQVZFZm10IBAAAAABAAEAQB8AAEAfAAABAAgAZGF0YSgAAACAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICA"
)


class Empty(BaseModel):
    pass


class Out(BaseModel):
    audio: Audio


class AudioContent:
    description = "Returns a few milliseconds of silence as WAV audio"
    input_schema = Empty
    output_schema = Out

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        return {"audio": Audio(data=SILENCE_WAV, mimeType="audio/wav")}
