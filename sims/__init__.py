"""Small torch simulations that show each trap's mechanism happening, one file each."""
