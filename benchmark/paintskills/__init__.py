"""benchmark/paintskills"""
