"""ember.library placeholder"""
