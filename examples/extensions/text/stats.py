"""text.stats: word and character statistics for a piece of text."""

from collections import Counter
from typing import Any, ClassVar

from apcore import ModuleAnnotations
from pydantic import BaseModel, Field


class StatsInput(BaseModel):
    text: str = Field(description="The text to analyse")
    top_n: int = Field(default=3, ge=1, le=50, description="How many of the most frequent words to return")
    case_sensitive: bool = Field(default=False, description="Count 'Word' and 'word' separately")


class WordCount(BaseModel):
    word: str
    count: int


class StatsOutput(BaseModel):
    characters: int
    words: int
    lines: int
    top_words: list[WordCount]


class TextStats:
    description = "Count the characters, words and lines of a text and list its most frequent words"
    documentation = (
        "text.stats splits the text on whitespace, strips surrounding punctuation from each word\n"
        "and counts them. Use top_n to choose how many frequent words come back (1-50).\n"
        'Example: {"text": "the cat and the hat", "top_n": 1} -> top_words [{"word": "the", "count": 2}]'
    )
    input_schema = StatsInput
    output_schema = StatsOutput
    tags: ClassVar[list[str]] = ["text", "public"]
    annotations = ModuleAnnotations(readonly=True, idempotent=True, open_world=False)
    view = "stats.html"  # an MCP Apps view, served as ui://text.stats/view (docs/apps.md)

    def execute(self, inputs: dict[str, Any], context: object) -> dict[str, Any]:
        text = inputs["text"]
        words = [w.strip(".,;:!?\"'()[]") for w in text.split()]
        words = [w if inputs.get("case_sensitive") else w.lower() for w in words if w]
        top = Counter(words).most_common(inputs.get("top_n", 3))
        return {
            "characters": len(text),
            "words": len(words),
            "lines": len(text.splitlines()) or (1 if text else 0),
            "top_words": [{"word": word, "count": count} for word, count in top],
        }
