"""The call path: the one waist every tool call passes, whatever edge received it.

``router`` routes a call through the apcore ``Executor`` and never raises; ``context`` is the
per-call object module code reads; ``authorization``, ``principal`` and ``limits`` decide who may
call what and how often; ``approval`` and ``used_approvals`` ask the person behind the client;
``inputs`` and ``outputs`` check a call against its module's contracts; ``errors`` is the one
boundary where an error becomes what a client sees; ``spans`` traces it. Reads ``tools/``.
"""
