"""Private package: _observe"""
