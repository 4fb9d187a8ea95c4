from django.apps import AppConfig


class ForgeUIConfig(AppConfig):
    name = "forgeui"
    verbose_name = "forge"
    default_auto_field = "django.db.models.BigAutoField"
