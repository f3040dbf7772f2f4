"""published"""
