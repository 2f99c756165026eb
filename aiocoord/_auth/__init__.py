"""Authentication mechanisms a new connection speaks: SASL DIGEST-MD5 (``digest``) and
Kerberos through SASL GSSAPI (``gssapi``)."""
