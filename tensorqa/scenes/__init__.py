"""tensorqa/scenes"""
