"""The fixtures every page's tests share (tests/app_fixtures.py): the app over tiny checkpoints (`checkpoints`, `at`)
and the tiny checkpoint folders some tests open through links (`tiny_en_ar`, `tiny_and_other`). A module that needs
other ones defines its own."""

from tests.app_fixtures import at, checkpoints, tiny_and_other, tiny_en_ar  # noqa: F401  (fixtures)
