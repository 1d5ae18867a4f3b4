"""olmorl.sandbox"""
