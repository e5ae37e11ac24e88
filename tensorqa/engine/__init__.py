"""tensorqa/engine"""
