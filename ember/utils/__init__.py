"""ember.utils: Python dispatch modes (``_python_dispatch``); data loading arrives with the nn issue."""
