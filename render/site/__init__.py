"""The site: engines and their generated config, assets, the sanitizer, the site folder and its swap."""
