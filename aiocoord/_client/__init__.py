"""The parts :class:`aiocoord.Client` owns and delegates to: the way to the session
(``requests``), multi-request path operations and guaranteed deletes (``pathops``), admin
operations (``adminops``), background work (``background``); with connecting (``connect``),
the ensemble tracker (``tracker``) and the one door recipes use below the client's public
methods (``door``). They sit above :mod:`aiocoord._session` and below the recipes.
"""
