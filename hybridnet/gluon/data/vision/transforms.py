"""placeholder (written last)"""
