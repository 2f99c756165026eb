"""The parts :class:`aiocoord.Client` is made of: connecting (``connect``), multi-request path
operations and guaranteed deletes (``pathops``), admin operations (``adminops``), background
work (``background``), the session's state as the client shows it (``sessionview``) and the
ensemble tracker (``tracker``). They sit above :mod:`aiocoord._session` and below the recipes.
"""
