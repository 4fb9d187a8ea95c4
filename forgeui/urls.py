from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path

from .api import api

urlpatterns: list[URLPattern | URLResolver] = [
    path("admin/", admin.site.urls),
    path("api/", api.urls),
    path("accounts/", include("django.contrib.auth.urls")),
]
