"""Claims the provider puts in ID tokens and userinfo: a user's groups among them."""

from typing import Any

from oauth2_provider.oauth2_validators import OAuth2Validator


class GroupsClaimValidator(OAuth2Validator):
    oidc_claim_scope = {**OAuth2Validator.oidc_claim_scope, "groups": "groups"}

    def get_additional_claims(self, request: Any) -> dict[str, Any]:
        user = request.user
        return {"preferred_username": user.username, "email": user.email,
                "groups": sorted(user.groups.values_list("name", flat=True))}
