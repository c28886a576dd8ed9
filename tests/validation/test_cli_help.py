"""`python -m validation SUBCOMMAND --help` documents every option (from a newcomer audit:
`--max-nfev` of machine-fit and thesis-fit, and `--profile` of six analyses, printed
with no help text at all, so their defaults, 3, 12 and thesis-2004, were invisible)."""
from validation.cli import _parser


def _subcommands():
    p = _parser()
    return next(a for a in p._actions if a.dest == "cmd").choices


def test_every_validation_option_has_help():
    missing = [f"{name} {'/'.join(a.option_strings) or a.dest}"
               for name, sub in _subcommands().items()
               for a in sub._actions if a.dest != "help" and not a.help]
    assert not missing, f"options with no help text: {', '.join(missing)}"


def test_the_defaults_a_user_cannot_see_otherwise_are_stated():
    subs = _subcommands()
    for name in ("machine-fit", "thesis-fit"):
        a = next(a for a in subs[name]._actions if a.dest == "max_nfev")
        assert f"default {a.default}" in a.help, (name, a.help)
    for name in ("specweb-idle", "sensitivity", "window", "seeds", "trace", "drops"):
        a = next(a for a in subs[name]._actions if a.dest == "profile")
        assert f"default {a.default}" in a.help, (name, a.help)


def test_fit_help_states_the_base_profile_default_and_every_special_metric():
    # `fit` without --base-profile starts from thesis-2004 (and keeps its costs for every cost
    # not fitted); the help did not say so.  Its --metrics help left out peak_replies_per_s,
    # which the fitter takes and `simaccept fit --help` lists.
    from validation.fitter import GROUPED, PEAK
    fit = _subcommands()["fit"]
    base = next(a for a in fit._actions if a.dest == "base_profile")
    assert f"default {base.default}" in base.help
    metrics = next(a for a in fit._actions if a.dest == "metrics")
    for m in (*GROUPED, PEAK):
        assert m in metrics.help, m


def _options(sub):
    return {(tuple(a.option_strings), a.dest, repr(a.default), a.required, tuple(a.choices or ()), a.help)
            for a in sub._actions if a.dest != "help"}


def test_fit_and_predict_are_the_same_in_both_commands():
    # `simaccept fit` and `python -m validation fit` run one fit_main: their options were two
    # copies, and `simaccept fit` lacked --verbose, which fit_main reads
    from simaccept import cli
    mine = next(a for a in cli._parser()._actions if a.dest == "cmd").choices
    for cmd in ("fit", "predict"):
        assert _options(mine[cmd]) == _options(_subcommands()[cmd]), cmd
