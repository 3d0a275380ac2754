//! The tantivy adapter around the shared analyzer ([`hindsight_text::pieces`]).

use hindsight_text::{Piece, pieces};
use tantivy::tokenizer::{Token, TokenStream, Tokenizer};

/// Name under which [`MixedTokenizer`] is registered in a keyword index.
pub const TOKENIZER_NAME: &str = "hindsight_mixed";

/// The tantivy adapter around [`pieces`].
#[derive(Clone, Debug, Default)]
pub struct MixedTokenizer;

/// Token stream over pre-computed pieces.
#[derive(Debug)]
pub struct MixedTokenStream {
    pieces: std::vec::IntoIter<Piece>,
    token: Token,
}

impl Tokenizer for MixedTokenizer {
    type TokenStream<'a> = MixedTokenStream;
    fn token_stream<'a>(&'a mut self, text: &'a str) -> MixedTokenStream {
        MixedTokenStream {
            pieces: pieces(text).into_iter(),
            token: Token::default(),
        }
    }
}

impl TokenStream for MixedTokenStream {
    fn advance(&mut self) -> bool {
        match self.pieces.next() {
            Some(p) => {
                self.token.position = self.token.position.wrapping_add(1);
                self.token.offset_from = p.start;
                self.token.offset_to = p.end;
                self.token.text = p.text;
                true
            }
            None => false,
        }
    }
    fn token(&self) -> &Token {
        &self.token
    }
    fn token_mut(&mut self) -> &mut Token {
        &mut self.token
    }
}
