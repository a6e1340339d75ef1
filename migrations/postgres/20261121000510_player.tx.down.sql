DROP TABLE lobby_members;
--bun:split
DROP TABLE lobbies;
--bun:split
DROP TABLE social_edges;
--bun:split
DROP TABLE player_profiles;
--bun:split
DROP TABLE player_decks;
