"""The paper's study: the figures and timing table (:mod:`.reproduce`), the unknown-w
extension (:mod:`.unknown_w`) and the quick demo (:mod:`.demo`)."""
