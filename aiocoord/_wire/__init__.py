"""The ZooKeeper wire format as typed records (private).

One module per concern, the lower ones first: :mod:`.opcodes` (opcodes, special xids, modes),
:mod:`.jute` (the Jute primitives every record is made of), :mod:`.data` (Stat, ACL),
:mod:`.framing` (length prefix, request and reply headers, the :class:`~.framing.Request` base
that ties a request to the record of its reply), then the records themselves: :mod:`.reads`,
:mod:`.writes`, :mod:`.multi`, :mod:`.watches`, :mod:`.auth` and :mod:`.handshake`.

Every record is a dataclass with ``encode`` and ``decode``; requests also give their whole
frame (``frame(xid)``) and decode the body of their reply (``decode_reply``). Nothing here
touches a socket, and nothing above the connection knows a byte layout.
"""
