"""olmorl.trainer"""
