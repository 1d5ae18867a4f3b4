"""olmorl.clients"""
