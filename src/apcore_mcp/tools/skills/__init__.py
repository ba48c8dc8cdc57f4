"""Skills (SEP-2640, ``io.modelcontextprotocol/skills``): the model, generation, the skills directory.

``model`` holds the frozen ``Skill`` and ``SkillSet`` every route renders from; ``generate``
writes one skill per module group from the registry's own metadata; ``directory`` reads a
module author's hand-written ``skills/`` folder. Serving them is ``mcp/skills.py``.
"""
