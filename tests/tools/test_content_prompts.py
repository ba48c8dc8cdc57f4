"""Rich results, resource modules and templates, prompt files and completion, through real clients."""

from __future__ import annotations

import base64
from pathlib import Path

import mcp.types as types
import pytest
from apcore import Registry
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.shared.exceptions import MCPError

from apcore_mcp.bridge import Bridge
from apcore_mcp.settings import Settings
from apcore_mcp.tools.prompts import PromptFileError, load_prompts

from tests._support.results import block_text
from tests._support.sessions import OpenClient

CONFORMANCE = Path(__file__).resolve().parents[2] / "examples" / "conformance"


async def test_rich_content_arrives_as_content_blocks(connect: OpenClient) -> None:
    async with connect() as conn:
        result = await conn.client.call_tool("demo.media", {})
        listed = {tool.name: tool for tool in (await conn.client.list_tools()).tools}
    kinds = [block.type for block in result.content]
    assert kinds == ["image", "audio", "resource", "resource_link", "text"]
    image, audio, resource, link, rest = result.content
    assert isinstance(image, types.ImageContent) and image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(b"\x89PNG")
    assert isinstance(audio, types.AudioContent) and audio.mime_type == "audio/wav"
    assert isinstance(resource, types.EmbeddedResource)
    assert isinstance(resource.resource, types.TextResourceContents) and resource.resource.text == "a,b\n1,2\n"
    assert isinstance(link, types.ResourceLink) and str(link.uri) == "docs://demo.echo"
    # The structured part: declared formats kept (ISO 8601), the media left out of it and of its schema.
    assert result.structured_content == {"generated_at": "2026-12-01T09:00:00Z", "title": "a chart"}
    assert (
        isinstance(rest, types.TextContent) and rest.text == '{"generated_at":"2026-12-01T09:00:00Z","title":"a chart"}'
    )
    schema = listed["demo.media"].output_schema
    assert schema is not None and sorted(schema["properties"]) == ["generated_at", "title"]
    assert schema["required"] == ["generated_at", "title"]


def conformance_bridge() -> Bridge:
    registry = Registry(extensions_dir=str(CONFORMANCE / "extensions"))
    registry.discover()
    return Bridge.build(registry, Settings(prompts_dir=str(CONFORMANCE / "prompts")))


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_resource_modules_templates_and_completion(mode: str) -> None:
    bridge = conformance_bridge()
    async with Client(bridge.server, mode=mode, cache=None) as client:
        listed = {str(r.uri) for r in (await client.list_resources()).resources}
        templates = {t.uri_template for t in (await client.list_resource_templates()).resource_templates}
        text = (await client.read_resource("test://static-text")).contents[0]
        binary = (await client.read_resource("test://static-binary")).contents[0]
        templated = (await client.read_resource("test://template/42/data")).contents[0]
        ids = await client.complete(
            types.ResourceTemplateReference(uri="test://template/{id}/data"), {"name": "id", "value": "4"}
        )
        with pytest.raises(MCPError) as missing:
            await client.read_resource("test://nowhere")
    assert {"test://static-text", "test://static-binary", "test://watched-resource"} <= listed
    assert {"docs://{module_id}", "test://template/{id}/data"} <= templates
    assert isinstance(text, types.TextResourceContents) and text.text.startswith("This is the content")
    assert isinstance(binary, types.BlobResourceContents) and binary.mime_type == "image/png"
    assert isinstance(templated, types.TextResourceContents) and templated.mime_type == "application/json"
    assert templated.text == '{"id":"42","templateTest":true,"data":"Data for ID: 42"}'
    assert ids.completion.values == ["456"]
    assert "Resource not found" in str(missing.value)


async def test_docs_template_completes_module_ids(connect: OpenClient) -> None:
    async with connect() as conn:
        templates = (await conn.client.list_resource_templates()).resource_templates
        done = await conn.client.complete(
            types.ResourceTemplateReference(uri="docs://{module_id}"), {"name": "module_id", "value": "demo.e"}
        )
    assert [t.uri_template for t in templates] == ["docs://{module_id}"]
    assert done.completion.values == ["demo.echo"]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_prompt_files(mode: str) -> None:
    async def answer(context: ClientRequestContext, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert params.message == "What context should the prompt use?"
        return types.ElicitResult(action="accept", content={"context": "release notes"})

    bridge = conformance_bridge()
    async with Client(bridge.server, mode=mode, elicitation_callback=answer, cache=None) as client:
        names = [prompt.name for prompt in (await client.list_prompts()).prompts]
        with_args = await client.get_prompt("test_prompt_with_arguments", {"arg1": "hello", "arg2": "world"})
        image = await client.get_prompt("test_prompt_with_image", {})
        embedded = await client.get_prompt("test_prompt_with_embedded_resource", {"resourceUri": "test://x"})
        asked = await client.get_prompt("test_input_required_result_prompt", {})
        completion = await client.complete(
            types.PromptReference(name="test_prompt_with_arguments"), {"name": "arg1", "value": "par"}
        )
        with pytest.raises(MCPError) as missing_argument:
            await client.get_prompt("test_prompt_with_arguments", {"arg1": "only one"})
    assert "test_simple_prompt" in names and "test_prompt_with_image" in names
    assert block_text(with_args.messages[0].content) == "Prompt with arguments: arg1='hello', arg2='world'"
    assert [m.content.type for m in image.messages] == ["image", "text"]
    resource = embedded.messages[0].content
    assert isinstance(resource, types.EmbeddedResource) and str(resource.resource.uri) == "test://x"
    assert block_text(asked.messages[0].content) == "Use this context: release notes"
    assert completion.completion.values == ["paris", "park", "party"]
    assert "Missing required argument: arg2" in str(missing_argument.value)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("messages: []", "messages: at least one message is required"),
        ("messages: [{role: system, text: hi}]", "messages[0].role: must be one of user, assistant"),
        ("messages: [{text: hi, image: {}}]", "messages[0]: needs exactly one of text, image, audio, resource"),
        ("messages: [{image: {mime_type: image/png, file: ../../etc/passwd}}]", "must be inside the prompts directory"),
        (
            "arguments: [{description: no name}]\nmessages: [{text: hi}]",
            "arguments[0]: must be a mapping with a non-empty",
        ),
        ("colour: blue\nmessages: [{text: hi}]", "colour: unknown field"),
        (": [", "cannot be read as YAML"),
    ],
)
def test_a_bad_prompt_file_is_named_with_its_field(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(content)
    with pytest.raises(PromptFileError) as error:
        load_prompts(tmp_path)
    assert str(error.value).startswith(f"{path}: ")
    assert message in str(error.value)
