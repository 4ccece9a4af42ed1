"""Generated documentation stays in step with the code it is generated from."""

from django.core.management import call_command


def test_the_keys_page_is_generated_from_keys_py():
    call_command("keys_doc", "--check")  # (fails naming the command that brings it up to date)


def test_the_environment_page_is_generated_from_the_code():
    call_command("env_doc", "--check")


def test_the_api_reference_is_generated_from_the_served_document():
    call_command("api_doc", "--check")
