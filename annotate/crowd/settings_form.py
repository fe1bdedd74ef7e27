"""The form of a study's provider settings, built from what the provider declares
(``SETTINGS`` of the class registered as its ``settings``: :class:`~annotate.crowd.providers.base.settings.Setting`).

Each declared setting becomes one field of its kind with its default, limits and help; the form's
:meth:`ProviderSettingsForm.config` turns what was entered back into ``Study.provider_config`` (keys the
form does not show are kept), and the provider's own validation (``validate_config``) has the last word,
its :class:`~annotate.crowd.providers.base.retry.ProviderConfigError` shown at the field it names.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from django import forms

from annotate.crowd.providers import PROVIDERS, get_provider
from annotate.crowd.providers.base.retry import ProviderConfigError
from annotate.crowd.providers.base.settings import FeeRule, Setting


def declared(provider_name: str) -> tuple[Setting, ...]:
    """The settings the provider declares (none when it registered no settings class)."""
    settings_class = PROVIDERS.meta(provider_name).get("settings")
    return tuple(getattr(settings_class, "SETTINGS", ()))


def fee_rule(provider_name: str) -> FeeRule | None:
    settings_class = PROVIDERS.meta(provider_name).get("settings")
    return getattr(settings_class, "FEES", None)


def _help(setting: Setting) -> str:
    limits = []
    if setting.low is not None and setting.high is not None:
        limits.append(f"{setting.low} to {setting.high}")
    elif setting.low is not None:
        limits.append(f"at least {setting.low}")
    if setting.unit:
        limits.append(setting.unit)
    return setting.help + (f" ({', '.join(limits)})" if limits else "")


def _field(setting: Setting) -> forms.Field:
    common: dict[str, Any] = {
        "label": setting.label,
        "help_text": _help(setting),
        "required": setting.required and setting.kind != "flag",
    }
    kind = setting.kind
    if kind in ("text", "longtext", "words"):
        widget = forms.Textarea(attrs={"rows": 3}) if kind == "longtext" else None
        return forms.CharField(max_length=setting.max_length, widget=widget, strip=True, **common)
    if kind == "money":
        return forms.DecimalField(min_value=setting.low, decimal_places=2, max_digits=10, **common)
    if kind == "rate":
        return forms.DecimalField(min_value=Decimal(0), max_value=Decimal(1), decimal_places=4, **common)
    if kind == "whole":
        return forms.IntegerField(min_value=setting.low, max_value=setting.high, **common)
    if kind == "flag":
        return forms.BooleanField(**common)
    if kind == "choice":
        return forms.ChoiceField(choices=setting.choices, **common)
    return forms.MultipleChoiceField(
        choices=setting.choices, widget=forms.CheckboxSelectMultiple, **{**common, "required": True}
    )


def _shown(setting: Setting, value: Any) -> Any:
    """A stored value as the field shows it."""
    if setting.kind == "words" and isinstance(value, list | tuple):
        return ", ".join(str(v) for v in value)
    return value


def _stored(setting: Setting, value: Any) -> Any:
    """An entered value as ``provider_config`` keeps it (``None``: leave the key out, so the default
    applies)."""
    if setting.kind == "flag":
        return bool(value)
    if value in (None, "", []):
        return None
    if setting.kind in ("money", "rate"):
        return str(value)
    if setting.kind == "words":
        return [part.strip() for part in str(value).split(",") if part.strip()]
    return value


class ProviderSettingsForm(forms.Form):
    """The study's provider settings, one field per declared setting, in the declared order."""

    def __init__(self, study, *args, **kwargs):
        self.study = study
        self.settings = declared(study.provider)
        config = study.provider_config if isinstance(study.provider_config, dict) else {}
        initial = {
            s.name: _shown(s, config[s.name]) if s.name in config else _shown(s, s.default)
            for s in self.settings
        }
        super().__init__(*args, initial=initial, **kwargs)
        for setting in self.settings:
            self.fields[setting.name] = _field(setting)

    def sections(self) -> list[tuple[str, list]]:
        """The bound fields grouped by the settings' sections, in the order they first appear."""
        grouped: dict[str, list] = {}
        for setting in self.settings:
            grouped.setdefault(setting.section, []).append(self[setting.name])
        return list(grouped.items())

    def config(self) -> dict[str, Any]:
        """The study's ``provider_config`` with what was entered (valid form only)."""
        config = dict(self.study.provider_config) if isinstance(self.study.provider_config, dict) else {}
        for setting in self.settings:
            value = _stored(setting, self.cleaned_data.get(setting.name))
            if value is None:
                config.pop(setting.name, None)
            else:
                config[setting.name] = value
        return config

    def save(self) -> bool:
        """Check the entered settings with the provider and store them; ``False`` (errors added to the
        fields) when the provider refuses them."""
        if not self.is_valid():
            return False
        config = self.config()
        try:
            get_provider(self.study.provider).validate_config(config)
        except ProviderConfigError as exc:
            self.add_error(exc.field if exc.field in self.fields else None, exc.message)
            return False
        self.study.provider_config = config
        self.study.save(update_fields=["provider_config"])
        return True
