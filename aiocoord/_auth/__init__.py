"""Private package: _auth"""
