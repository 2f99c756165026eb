"""Private package: _client"""
