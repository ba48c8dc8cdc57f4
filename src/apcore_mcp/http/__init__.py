"""The HTTP edge: the Starlette app, its routes, guards and metrics (Starlette lives only here and in run/)."""
