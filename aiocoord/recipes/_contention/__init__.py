"""Private package: _contention"""
