"""The link, page state and settings: query parameters checked, written back, class mode, the search controls, the
sentence a page opens on."""
