from oauth2_provider.oauth2_validators import OAuth2Validator


class Validator(OAuth2Validator):
    """The claims a test account carries: its email, verified unless its name says not."""

    oidc_claim_scope = {
        **OAuth2Validator.oidc_claim_scope,
        "email": "email",
        "email_verified": "email",
        "preferred_username": "profile",
    }

    def get_additional_claims(self, request):
        user = request.user
        return {
            "email": user.email,
            "email_verified": not user.username.startswith("unverified"),
            "preferred_username": user.username,
        }
