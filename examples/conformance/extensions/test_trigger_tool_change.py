from typing import Any

from pydantic import BaseModel

from apcore_mcp import Text


class Empty(BaseModel):
    pass


class Out(BaseModel):
    message: Text


class TriggerToolChange:
    description = "Adds or removes the tool test_toggled_tool, changing the tool list"
    input_schema = Empty
    output_schema = Out

    class Toggled:
        description = "Appears and disappears when test_trigger_tool_change runs"
        input_schema = Empty
        output_schema = Out

        async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
            return {"message": Text(text="here")}

    async def execute(self, inputs: dict[str, Any], context: Any) -> dict[str, Any]:
        registry = context.executor.registry
        if registry.has("test_toggled_tool"):
            registry.unregister("test_toggled_tool")
            return {"message": Text(text="removed test_toggled_tool")}
        registry.register("test_toggled_tool", self.Toggled())
        return {"message": Text(text="added test_toggled_tool")}
