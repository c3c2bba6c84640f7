"""trialform's stand-in for nni.utils: merge_parameter only."""


def merge_parameter(base_params, override_params):
    """Overwrite fields of base_params (an argparse.Namespace or a dict) with
    override_params (the dict from nni.get_next_parameter()), converting each
    value to the type of the field it replaces. Unknown keys are an error."""
    if override_params is None:
        return base_params
    is_dict = isinstance(base_params, dict)
    for k, v in override_params.items():
        if is_dict:
            if k not in base_params:
                raise ValueError("Key '%s' not found in base parameters." % k)
            cur = base_params[k]
        else:
            if not hasattr(base_params, k):
                raise ValueError("Key '%s' not found in base parameters." % k)
            cur = getattr(base_params, k)
        if cur is not None and v is not None and type(cur) is not type(v):
            if isinstance(cur, bool) or not isinstance(cur, (int, float, str)):
                raise TypeError("Expected '%s' in override parameters to have type %s, but found %s."
                                % (k, type(cur).__name__, type(v).__name__))
            v = type(cur)(v)
        if is_dict:
            base_params[k] = v
        else:
            setattr(base_params, k, v)
    return base_params
