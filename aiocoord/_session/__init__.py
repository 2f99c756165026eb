"""The session manager: one ZooKeeper session kept alive across connections.

``session`` owns the lifecycle and the requests, ``connection`` one socket, ``hosts`` which
server is tried next, ``servers`` the connect string, ``liveness`` when the session may be
trusted, ``prelude`` what a new connection carries first, ``states`` the state stream,
``watch``/``watch_table`` the watches, ``held`` the requests accepted while offline,
``ensemble_config`` the ensemble's configuration. Nothing here knows a recipe or the client.
"""
