"""Token exchange (RFC 8693) for url upstreams: the exchange (``exchange``) and the checks of an
entry's ``auth`` object (``checks``)."""
