"""``python -m apcore_mcp``."""

from apcore_mcp.cli import main

if __name__ == "__main__":
    main()
