"""Private package: _session"""
