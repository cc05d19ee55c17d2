def build_all(settings):
    return {}
